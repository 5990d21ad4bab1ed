// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

import {IERC1820Implementer} from "@openzeppelin/contracts@4.8.3/utils/introspection/IERC1820Implementer.sol";

/// @notice The interface-implementer part of the EIP-1820 registry, for dev chains where the real one
/// (deployed by a keyless pre-EIP-155 transaction) is absent. Tests copy its runtime code to the
/// canonical registry address with `anvil_setCode`, so ERC777 tokens (which register themselves
/// there in their constructor) can be deployed and detected. Same rules as EIP-1820: only an
/// account's manager (itself by default) sets its implementers, and an implementer other than the
/// caller must accept with canImplementInterfaceForAddress.
contract TestERC1820Registry {
    bytes32 private constant ERC1820_ACCEPT_MAGIC = keccak256("ERC1820_ACCEPT_MAGIC");

    mapping(address => mapping(bytes32 => address)) private implementers;
    mapping(address => address) private managers;

    event InterfaceImplementerSet(address indexed addr, bytes32 indexed interfaceHash, address indexed implementer);
    event ManagerChanged(address indexed addr, address indexed newManager);

    function getManager(address account) public view returns (address) {
        address manager = managers[account];
        return manager == address(0) ? account : manager;
    }

    function setManager(address account, address newManager) external {
        require(getManager(account) == msg.sender, "Not the manager");
        managers[account] = newManager == account ? address(0) : newManager;
        emit ManagerChanged(account, newManager);
    }

    function setInterfaceImplementer(address account, bytes32 interfaceHash, address implementer) external {
        address addr = account == address(0) ? msg.sender : account;
        require(getManager(addr) == msg.sender, "Not the manager");
        require(uint256(interfaceHash) & type(uint224).max != 0, "Must not be an ERC165 hash");
        if (implementer != address(0) && implementer != msg.sender) {
            require(
                IERC1820Implementer(implementer).canImplementInterfaceForAddress(interfaceHash, addr) == ERC1820_ACCEPT_MAGIC,
                "Does not implement the interface"
            );
        }
        implementers[addr][interfaceHash] = implementer;
        emit InterfaceImplementerSet(addr, interfaceHash, implementer);
    }

    function getInterfaceImplementer(address account, bytes32 interfaceHash) external view returns (address) {
        address addr = account == address(0) ? msg.sender : account;
        return implementers[addr][interfaceHash];
    }
}
