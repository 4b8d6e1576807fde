"""The chain layer against a real anvil: reverts by name, sends, nonces, events, connection errors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from eth_account.signers.local import LocalAccount
from web3 import Web3
from web3.contract import Contract

from gensyn_py.chain.accounts import create_keystore, from_private_key, load_account
from gensyn_py.chain.client import connect, with_retry
from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.events import EventReader, JsonFileCursor, MemoryCursor
from gensyn_py.chain.nonce import NonceManager
from gensyn_py.chain.revert import ErrorDecoder
from gensyn_py.chain.tx import TxSender
from gensyn_py.devnet.anvil import free_port
from gensyn_py.devnet.compiler import compile_contracts
from gensyn_py.errors import ChainError, ConfigError, ContractRevert, TransactionError

FIXTURES = Path(__file__).parent / "fixtures"


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)  # polling a condition, bounded by the deadline


@pytest.fixture(scope="module")
def reverter_artifact() -> dict[str, Any]:
    return compile_contracts(sources_dir=FIXTURES)["Reverter"]


@pytest.fixture
def account(accounts: list[LocalAccount]) -> LocalAccount:
    return accounts[7]  # an account the other suites leave alone


@pytest.fixture
def sender(w3: Web3, account: LocalAccount, reverter_artifact: dict[str, Any], snapshot: None) -> TxSender:
    # A fresh nonce manager: the snapshot fixture rewinds the chain between tests.
    return TxSender(
        w3, account, ErrorDecoder([reverter_artifact["abi"]]),
        nonces=NonceManager.for_account(w3, account.address), receipt_timeout=30,
    )


@pytest.fixture
def deployed(sender: TxSender, reverter_artifact: dict[str, Any]) -> tuple[Contract, int]:
    contract, receipt = sender.deploy(reverter_artifact["abi"], reverter_artifact["bytecode"])
    return contract, int(receipt["blockNumber"])


@pytest.fixture
def reverter(deployed: tuple[Contract, int]) -> Contract:
    return deployed[0]


@pytest.fixture
def manual_mining(w3: Web3) -> Iterator[None]:
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        yield
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]


def mine(w3: Web3, blocks: int = 1) -> None:
    w3.provider.make_request("anvil_mine", [hex(blocks)])  # type: ignore[arg-type]


# --- reverts -------------------------------------------------------------------------------------


def test_custom_error_is_named_with_its_args_before_any_gas_is_spent(
    w3: Web3, sender: TxSender, reverter: Contract
) -> None:
    nonce_before = w3.eth.get_transaction_count(sender.address)
    with pytest.raises(ContractRevert) as info:
        sender.send(reverter.functions.needAtLeast(1, 5))
    assert info.value.name == "NotEnough"
    assert info.value.error_args == {"have": 1, "want": 5}
    assert "needAtLeast" in str(info.value)
    assert w3.eth.get_transaction_count(sender.address) == nonce_before


def test_static_call_runs_from_the_senders_account(sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(ContractRevert) as info:
        sender.call(reverter.functions.onlyNobody())
    assert info.value.name == "Unauthorized"
    assert info.value.error_args == {"caller": sender.address}


def test_require_string_is_decoded(sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(ContractRevert) as info:
        sender.send(reverter.functions.requirePositive(0))
    assert info.value.name == "Error"
    assert info.value.error_args == {"message": "x must be positive"}
    assert sender.call(reverter.functions.requirePositive(3)) == 3


def test_division_by_zero_is_a_named_panic(sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(ContractRevert) as info:
        sender.call(reverter.functions.divide(1, 0))
    assert info.value.name == "Panic"
    assert info.value.error_args == {"code": 0x12, "meaning": "division or modulo by zero"}


def test_bare_revert_is_reported_without_data(sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(ContractRevert) as info:
        sender.send(reverter.functions.bare())
    assert info.value.name == "Revert"


# --- sending -------------------------------------------------------------------------------------


def test_successful_send_returns_a_receipt_with_eip1559_fees(
    w3: Web3, sender: TxSender, reverter: Contract
) -> None:
    receipt = sender.send(reverter.functions.store(41))
    assert receipt["status"] == 1
    tx = w3.eth.get_transaction(receipt["transactionHash"])
    assert tx["type"] == 2
    base_fee = w3.eth.get_block(receipt["blockNumber"] - 1)["baseFeePerGas"]
    assert tx["maxFeePerGas"] >= 2 * base_fee
    assert receipt["gasUsed"] < tx["gas"]
    assert sender.call(reverter.functions.values(0)) == 41


def test_concurrent_sends_from_one_account_all_mine_with_distinct_nonces(
    w3: Web3, sender: TxSender, reverter: Contract
) -> None:
    first_nonce = w3.eth.get_transaction_count(sender.address)
    with ThreadPoolExecutor(max_workers=8) as pool:
        receipts = list(pool.map(lambda i: sender.send(reverter.functions.store(i)), range(12)))
    assert all(r["status"] == 1 for r in receipts)
    nonces = sorted(w3.eth.get_transaction(r["transactionHash"])["nonce"] for r in receipts)
    assert nonces == list(range(first_nonce, first_nonce + 12))
    assert sender.call(reverter.functions.count()) == 12


def test_tx_that_fails_once_mined_is_replayed_to_name_the_error(
    w3: Web3, sender: TxSender, reverter: Contract, manual_mining: None
) -> None:
    # Both claims pass the static call (nothing is mined yet); the second one fails in the block.
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(sender.send, reverter.functions.claim(1), 0, 200_000) for _ in range(2)]
        wait_for(lambda: len(w3.eth.get_block("pending")["transactions"]) == 2, what="two pending claims")
        mine(w3)
        outcomes: list[Any] = []
        for future in futures:
            try:
                outcomes.append(future.result(timeout=30))
            except ContractRevert as exc:
                outcomes.append(exc)
    reverts = [o for o in outcomes if isinstance(o, ContractRevert)]
    assert len(reverts) == 1
    assert reverts[0].name == "AlreadyClaimed"
    assert reverts[0].error_args == {"id": 1}
    assert "failed" in str(reverts[0])


def test_out_of_gas_is_a_transaction_error_not_a_revert(sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(TransactionError) as info:
        sender.send(reverter.functions.store(1), gas=40_000)
    assert not isinstance(info.value, ContractRevert)
    assert "out of gas" in str(info.value)
    assert sender.send(reverter.functions.store(2))["status"] == 1


def test_a_rejected_send_resyncs_the_nonce(w3: Web3, sender: TxSender, reverter: Contract) -> None:
    with pytest.raises(TransactionError, match="rejected"):
        sender.send(reverter.functions.store(1), gas=1_000)  # below the intrinsic 21000
    assert sender.nonces.peek() is None
    receipt = sender.send(reverter.functions.store(2))
    assert receipt["status"] == 1


def test_stale_nonce_after_an_outside_send_is_recovered(
    w3: Web3, sender: TxSender, account: LocalAccount, reverter: Contract
) -> None:
    sender.send(reverter.functions.store(1))
    outsider = TxSender(w3, account, sender.decoder, nonces=NonceManager.for_account(w3, account.address))
    outsider.send(reverter.functions.store(2))
    assert sender.send(reverter.functions.store(3))["status"] == 1  # "nonce too low", resync, retry


# --- events --------------------------------------------------------------------------------------


def test_event_reader_waits_for_confirmations_and_resumes_from_its_cursor(
    w3: Web3, sender: TxSender, deployed: tuple[Contract, int], tmp_path: Path
) -> None:
    reverter, deploy_block = deployed
    receipts = [sender.send(reverter.functions.store(v)) for v in (10, 20, 30)]  # one block each
    cursor_path = tmp_path / "cursor.json"

    def reader() -> EventReader:  # a fresh reader is a restarted daemon
        return EventReader(w3, {"Reverter": reverter}, JsonFileCursor(cursor_path),
                           confirmations=2, chunk_size=2, start_block=deploy_block)

    seen: list[Any] = []
    assert reader().poll(seen.append) == 1  # the last two blocks are not confirmed yet
    first = seen[0]
    assert (first.contract, first.event) == ("Reverter", "Stored")
    assert first.args == {"by": sender.address, "id": 0, "value": 10}
    assert first.tx_hash == receipts[0]["transactionHash"].to_0x_hex()
    assert first.block_number == receipts[0]["blockNumber"]
    assert json.loads(cursor_path.read_text())["nextBlock"] == w3.eth.block_number - 1

    mine(w3, 2)
    assert reader().poll(seen.append) == 2
    assert [r.args["value"] for r in seen] == [10, 20, 30]
    assert [r.position for r in seen] == sorted(r.position for r in seen)
    assert reader().poll(seen.append) == 0


def test_a_handler_failure_replays_only_the_unfinished_batch(
    w3: Web3, sender: TxSender, deployed: tuple[Contract, int]
) -> None:
    reverter, deploy_block = deployed
    for v in (1, 2, 3):
        sender.send(reverter.functions.store(v))
    cursor = MemoryCursor()
    reader = EventReader(w3, [reverter], cursor, chunk_size=1, start_block=deploy_block)
    handled: list[int] = []

    def flaky(record: Any) -> None:
        if record.args["value"] == 2 and 2 not in handled:
            handled.append(2)
            raise RuntimeError("handler crashed")
        handled.append(record.args["value"])

    with pytest.raises(RuntimeError):
        reader.poll(flaky)
    assert reader.poll(flaky) == 2
    assert handled == [1, 2, 2, 3]  # the crashed event again, the finished one never


def test_stored_events_carry_chain_order_within_one_block(
    w3: Web3, sender: TxSender, deployed: tuple[Contract, int], manual_mining: None
) -> None:
    reverter, deploy_block = deployed
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(sender.send, reverter.functions.store(v), 0, 200_000) for v in range(3)]
        wait_for(lambda: len(w3.eth.get_block("pending")["transactions"]) == 3, what="three pending stores")
        mine(w3)
        for f in futures:
            f.result(timeout=30)
    records = EventReader(w3, [reverter], start_block=deploy_block).fetch(deploy_block, w3.eth.block_number)
    assert len({r.block_number for r in records}) == 1
    assert [r.log_index for r in records] == sorted(r.log_index for r in records)
    assert [r.args["id"] for r in records] == [0, 1, 2]


# --- contracts registry --------------------------------------------------------------------------


def test_protocol_contracts_bind_deployments_and_decode_errors(
    w3: Web3, sender: TxSender, reverter: Contract, reverter_artifact: dict[str, Any], account: LocalAccount,
    tmp_path: Path,
) -> None:
    chain_id = w3.eth.chain_id
    (tmp_path / f"{chain_id}.json").write_text(
        json.dumps({"chainId": chain_id, "contracts": {"Reverter": reverter.address}})
    )
    protocol = ProtocolContracts.load(w3, tmp_path, {"Reverter": reverter_artifact["abi"]})
    assert protocol.addresses == {"Reverter": reverter.address}
    bound = protocol.bind("Reverter", protocol.sender(account, nonces=sender.nonces))
    receipt = bound.transact("store", 5)
    assert bound.events(receipt, "Stored") == [{"by": account.address, "id": 0, "value": 5}]
    assert bound.call("values", 0) == 5
    with pytest.raises(ContractRevert) as info:
        bound.call("needAtLeast", 1, 2)
    assert info.value.name == "NotEnough"
    read_only = protocol.bind("Reverter")
    assert read_only.call("count") == 1
    with pytest.raises(ChainError, match="read-only"):
        read_only.transact("store", 1)
    with pytest.raises(ConfigError, match="no deployed contract"):
        protocol["TaskPool"]


def test_deployment_for_another_chain_is_refused(w3: Web3, tmp_path: Path) -> None:
    chain_id = w3.eth.chain_id
    (tmp_path / f"{chain_id}.json").write_text(json.dumps({"chainId": 1, "contracts": {}}))
    with pytest.raises(ConfigError, match="chainId 1"):
        ProtocolContracts.load(w3, tmp_path, {})
    with pytest.raises(ConfigError, match="no deployment file"):
        ProtocolContracts.load(w3, tmp_path / "missing", {})


# --- connection and accounts ---------------------------------------------------------------------


def test_dead_rpc_url_is_a_chain_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(ChainError, match=url):
        connect(url, timeout=2, attempts=2)
    assert time.monotonic() - started < 10


def test_wrong_chain_is_a_chain_error(anvil_url: str, w3: Web3) -> None:
    assert connect(anvil_url, expected_chain_id=w3.eth.chain_id).eth.chain_id == w3.eth.chain_id
    with pytest.raises(ChainError, match="expected chain 1"):
        connect(anvil_url, expected_chain_id=1)


def test_keystore_round_trip_never_reveals_the_key(accounts: list[LocalAccount], tmp_path: Path) -> None:
    key = "0x" + accounts[9].key.hex()
    path = tmp_path / "keys" / "solver.json"
    created = create_keystore(path, "hunter2", key, kdf="pbkdf2", iterations=1000)
    assert created.address == accounts[9].address
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_account(str(path), "hunter2").address == accounts[9].address
    assert load_account(key).address == accounts[9].address
    with pytest.raises(ConfigError) as info:
        load_account(str(path), "wrong")
    assert key[2:] not in str(info.value)
    with pytest.raises(ConfigError, match="already exists"):
        create_keystore(path, "hunter2", key)
    with pytest.raises(ConfigError) as bad:
        from_private_key(key[:-2] + "zz")
    assert key[2:-2] not in str(bad.value)
    assert bad.value.__cause__ is None and bad.value.__suppress_context__


def test_threads_share_one_sender_safely(sender: TxSender, reverter: Contract) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for v in range(3):
                sender.send(reverter.functions.store(v))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sender.call(reverter.functions.count()) == 12


def test_with_retry_retries_only_transient_failures() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset by peer")
        return "ok"

    assert with_retry(flaky, attempts=3, base_delay=0) == "ok"
    assert len(calls) == 3

    def broken() -> None:
        calls.append(1)
        raise ValueError("not transient")

    calls.clear()
    with pytest.raises(ValueError):
        with_retry(broken, attempts=5, base_delay=0)
    assert len(calls) == 1
