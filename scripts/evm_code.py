"""Small EVM helpers the comparison scripts share (trace-compare.py, ots-compare.py)."""


def deploy_code(runtime):
    """Init code that deploys `runtime` (hex, no 0x) as is."""
    size = len(runtime) // 2
    assert size < 256
    return f"60{size:02x}80600b6000396000f3" + runtime


def word(hex_value):
    """A hex value (an address, a number) as one 32-byte calldata word, no 0x."""
    return hex_value.lower().replace("0x", "").rjust(64, "0")
