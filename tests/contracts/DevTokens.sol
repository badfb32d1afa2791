// SPDX-License-Identifier: MIT
// Tokens for the anvil_dealERC20 / anvil_setERC20Allowance tests and scripts/anvil-compare.sh:
// each keeps balances and allowances in a different storage layout, so a slot search that
// assumed one layout would fail on the others.
// - DevToken: a plain ERC-20 whose mappings are not at slot 0 (balances at 4, allowances at 5).
// - HashedToken: balances and allowances at hashed slots (keccak of the key and a namespace),
//   written in assembly, the way namespaced storage (ERC-7201) places them.
// - DevProxy: an EIP-1967 proxy; in front of a HashedToken its storage is the proxy's own, and
//   balanceOf also reads the implementation slot, which the search must skip.
// Compiled by scripts/compile-contract.mjs DevTokens (solc-js 0.8.37, optimizer 200, evmVersion shanghai)
// into DevTokens.json.
pragma solidity ^0.8.20;

contract DevToken {
    string public name = "Dev";
    string public symbol = "DEV";
    uint256 public totalSupply;
    address public owner;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor() {
        owner = msg.sender;
        totalSupply = 1_000_000 ether;
        balanceOf[msg.sender] = totalSupply;
        emit Transfer(address(0), msg.sender, totalSupply);
    }

    function decimals() external pure returns (uint8) {
        return 18;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "DevToken: allowance too low");
        allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) internal {
        require(balanceOf[from] >= value, "DevToken: balance too low");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}

contract HashedToken {
    bytes32 private constant BALANCES = keccak256("hearth.test.balances");
    bytes32 private constant ALLOWANCES = keccak256("hearth.test.allowances");

    event Transfer(address indexed from, address indexed to, uint256 value);

    function _balanceSlot(address who) internal pure returns (bytes32) {
        return keccak256(abi.encode(who, BALANCES));
    }

    function _allowanceSlot(address owner, address spender) internal pure returns (bytes32) {
        return keccak256(abi.encode(owner, spender, ALLOWANCES));
    }

    function balanceOf(address who) public view returns (uint256 value) {
        bytes32 slot = _balanceSlot(who);
        assembly {
            value := sload(slot)
        }
    }

    function allowance(address owner, address spender) public view returns (uint256 value) {
        bytes32 slot = _allowanceSlot(owner, spender);
        assembly {
            value := sload(slot)
        }
    }

    function mint(address to, uint256 value) external {
        bytes32 slot = _balanceSlot(to);
        assembly {
            sstore(slot, add(sload(slot), value))
        }
        emit Transfer(address(0), to, value);
    }

    function approve(address spender, uint256 value) external returns (bool) {
        bytes32 slot = _allowanceSlot(msg.sender, spender);
        assembly {
            sstore(slot, value)
        }
        return true;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 have = balanceOf(msg.sender);
        require(have >= value, "HashedToken: balance too low");
        bytes32 from = _balanceSlot(msg.sender);
        bytes32 dest = _balanceSlot(to);
        assembly {
            sstore(from, sub(have, value))
            sstore(dest, add(sload(dest), value))
        }
        emit Transfer(msg.sender, to, value);
        return true;
    }
}

contract DevProxy {
    // EIP-1967: bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1).
    bytes32 private constant IMPLEMENTATION =
        0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;

    constructor(address implementation) {
        assembly {
            sstore(IMPLEMENTATION, implementation)
        }
    }

    fallback() external payable {
        assembly {
            let implementation := sload(IMPLEMENTATION)
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), implementation, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            switch ok
            case 0 { revert(0, returndatasize()) }
            default { return(0, returndatasize()) }
        }
    }
}
