// SPDX-License-Identifier: MIT
// Hardhat-style console.log for scripts/console-compare.sh: every call here is a STATICCALL to
// the console address (0x000000000000000000636F6e736F6c652e6c6f67) with an ABI-encoded
// payload, as Hardhat's and forge-std's console libraries make them, but written from scratch
// in one tiny helper (`_log`). The script builds payloads for every console selector in Python
// and hands them to `relay` (and its variants) so any argument values can be exercised; a few
// functions also log through abi.encodeWithSignature so solc's own encoding paths appear.
// A console call that fails (a node that refuses a payload) is itself logged, so a refusal on
// one node and not on the other shows up as a line of difference.
// Compiled by scripts/compile-contract.mjs ConsoleLog (solc-js 0.8.37, optimizer 200, evmVersion shanghai)
// into ConsoleLog.json.
pragma solidity ^0.8.20;

contract ConsoleLog {
    address private constant CONSOLE = 0x000000000000000000636F6e736F6c652e6c6f67;

    error Custom(uint256 code, string why);

    /// Emitted by `nested`, so a printed trace has an event to name.
    event Nested(address indexed caller, uint256 a, uint256 b);

    uint256 public relayed;

    /// Logs a few fixed lines, then relays `payloads` (so the deployment itself logs).
    constructor(bytes[] memory payloads) payable {
        _log(abi.encodeWithSignature("log(string)", "ConsoleLog: constructor"));
        _log(abi.encodeWithSignature("log(string,address)", "deployed by %s", msg.sender));
        _log(abi.encodeWithSignature("log(string,uint256)", "with value", msg.value));
        for (uint256 i = 0; i < payloads.length; i++) {
            _send(payloads[i], i);
        }
        _log(abi.encodeWithSignature("log(string,address)", "constructor done at", address(this)));
    }

    /// Staticcalls the console address with each payload, in order.
    function relay(bytes[] calldata payloads) public returns (uint256) {
        for (uint256 i = 0; i < payloads.length; i++) {
            _send(payloads[i], i);
        }
        relayed += payloads.length;
        return payloads.length;
    }

    /// The same through a view function (an external call to it is itself a STATICCALL).
    function relayView(bytes[] calldata payloads) public view returns (uint256) {
        for (uint256 i = 0; i < payloads.length; i++) {
            _send(payloads[i], i);
        }
        return payloads.length;
    }

    /// Relays, then reverts with a string: the lines logged before the revert still count.
    function relayThenRevert(bytes[] calldata payloads) public returns (uint256) {
        relay(payloads);
        revert("relayThenRevert: reverted on purpose");
    }

    /// Relays `a` here; `b` one frame down (CALL), then one frame down through a view
    /// (STATICCALL); then `b` again in a frame that reverts and is caught; then `a` again.
    function nested(bytes[] calldata a, bytes[] calldata b) external returns (uint256) {
        _log(abi.encodeWithSignature("log(string,uint256)", "nested: depth 0, a has", a.length));
        relay(a);
        this.relay(b);
        this.relayView(b);
        try this.relayThenRevert(b) returns (uint256) {
            _log(abi.encodeWithSignature("log(string)", "nested: not reverted?"));
        } catch Error(string memory reason) {
            _log(abi.encodeWithSignature("log(string,string)", "nested: caught %s", reason));
        }
        try this.failCustom(7) {
            _log(abi.encodeWithSignature("log(string)", "nested: not reverted?"));
        } catch (bytes memory data) {
            _log(abi.encodeWithSignature("log(string,uint256)", "nested: caught revert data of length", data.length));
        }
        relay(a);
        _log(abi.encodeWithSignature("log(string)", "nested: done"));
        emit Nested(msg.sender, a.length, b.length);
        return a.length + b.length;
    }

    /// Console calls encoded by solc itself, with the function's arguments.
    function direct(uint256 n, int256 z, string calldata s, address who, bool flag, bytes32 h, bytes calldata data)
        external
        view
        returns (bool)
    {
        _log(abi.encodeWithSignature("log()"));
        _log(abi.encodeWithSignature("log(uint256)", n));
        _log(abi.encodeWithSignature("log(int256)", z));
        _log(abi.encodeWithSignature("log(string)", s));
        _log(abi.encodeWithSignature("log(bool)", flag));
        _log(abi.encodeWithSignature("log(address)", who));
        _log(abi.encodeWithSignature("log(bytes)", data));
        _log(abi.encodeWithSignature("log(bytes32)", h));
        _log(abi.encodeWithSignature("log(bytes4)", bytes4(h)));
        _log(abi.encodeWithSignature("log(string,uint256)", "n is %d", n));
        _log(abi.encodeWithSignature("log(string,int256)", "z is %i", z));
        _log(abi.encodeWithSignature("log(string,string)", "s is %s", s));
        _log(abi.encodeWithSignature("log(string,address,uint256)", "%s holds %d wei", who, who.balance));
        _log(abi.encodeWithSignature("log(uint256,bool,address,string)", n, flag, who, s));
        _log(abi.encodeWithSelector(bytes4(keccak256("log(string,bool)")), "flag", flag));
        return flag;
    }

    /// Logs, then reverts with a custom error.
    function failCustom(uint256 code) public view {
        _log(abi.encodeWithSignature("log(string,uint256)", "failCustom: about to revert with code", code));
        revert Custom(code, "custom failure");
    }

    /// Logs, then divides by `d` (0: Panic(0x12)).
    function failDivide(uint256 d) external view returns (uint256) {
        _log(abi.encodeWithSignature("log(string,uint256)", "failDivide: dividing by", d));
        return 100 / d;
    }

    /// Logs, then `assert(x != 0)` (0: Panic(0x01)).
    function failAssert(uint256 x) external view {
        _log(abi.encodeWithSignature("log(string,uint256)", "failAssert: asserting", x));
        assert(x != 0);
    }

    /// Logs, then `require(false, "reason")`.
    function failRequire() external view {
        _log(abi.encodeWithSignature("log(string)", "failRequire: about to require(false)"));
        require(false, "failRequire: the reason");
    }

    /// Logs, then burns gas in a loop until `rounds` is done (for eth_estimateGas).
    function burn(uint256 rounds) external returns (uint256 acc) {
        _log(abi.encodeWithSignature("log(string,uint256)", "burn: rounds", rounds));
        for (uint256 i = 0; i < rounds; i++) {
            acc ^= uint256(keccak256(abi.encode(acc, i)));
        }
        relayed += 1;
        _log(abi.encodeWithSignature("log(string,uint256)", "burn: done with", acc));
    }

    /// Logs, then reverts with exactly `data` as the revert data (any reason, well-formed or not).
    function revertWith(bytes calldata data) external view {
        _log(abi.encodeWithSignature("log(string,uint256)", "revertWith: bytes of revert data", data.length));
        bytes memory copy = data;
        assembly {
            revert(add(copy, 32), mload(copy))
        }
    }

    function _send(bytes memory payload, uint256 i) private view {
        (bool ok, bytes memory data) = CONSOLE.staticcall(payload);
        if (!ok || data.length != 0) {
            _log(abi.encodeWithSignature("log(string,uint256,bool)", "relay: payload %d succeeded: %s", i, ok));
            _log(abi.encodeWithSignature("log(bytes)", data));
        }
    }

    function _log(bytes memory payload) private view {
        (bool ok,) = CONSOLE.staticcall(payload);
        ok;
    }
}
