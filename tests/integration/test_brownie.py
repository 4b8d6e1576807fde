"""brownie as its users use it, with real brownie against a real devnet.

The project is a copy of this checkout (its tracked and not ignored files) in a
temporary folder, as a fresh clone would be: no build/, and HOME an empty
folder, so nothing from ~/.brownie or ~/.solcx, nor the checkout's build
outputs, is used. Only what `make setup` and `scripts/setup_brownie.sh` install
(node_modules, .venv-brownie) is linked in: reinstalling them would take minutes.
Each test plays one thing a user does there, in order:

1. `bash scripts/setup_brownie.sh` and `brownie compile` on that fresh clone;
2. `gensyn devnet up` on a port of its own, that host written into
   brownie-config.yaml, the set-up script run again, and brownie going there;
3. `TaskPool.at(address)` in `brownie console` (its real prompt, fed on stdin)
   on the contracts the devnet deployed with our own deployer;
4. `brownie run scripts/deploy.py` against that devnet, which must leave the
   devnet's deployment record alone and refuse to replace its own.

brownie runs from its own virtualenv (.venv-brownie, made by scripts/setup_brownie.sh)
because eth-brownie 1.22.2 pins hypothesis 6.27.3, older than the suite uses. It finds
its compiler (the set-up script's wrapper over the pinned solcjs) through
SOLCX_BINARY_PATH, as the README says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from web3 import Web3

from gensyn_py.devnet import devnet
from gensyn_py.devnet.anvil import DEV_KEYS, free_port
from gensyn_py.devnet.deploy import DEFAULT_PARAMS, POOL_FIELDS

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("node_modules", ".venv-brownie")  # installed by `make setup` and scripts/setup_brownie.sh
NETWORK = "gensyn-anvil"
pytestmark = [pytest.mark.brownie, pytest.mark.slow]


@dataclass(frozen=True)
class Project:
    path: Path
    home: Path
    env: dict[str, str]

    def run(self, *args: str, check: bool = True, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(args), cwd=self.path, env={**self.env, **(env or {})}, input=stdin,
            capture_output=True, text=True, timeout=600,
        )
        if check:
            assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc

    def brownie(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.path / ".venv-brownie" / "bin" / "brownie"), *args, **kwargs)

    def setup(self) -> str:
        return self.run("bash", "scripts/setup_brownie.sh").stdout

    def artifact(self, name: str) -> dict[str, Any]:
        return dict(json.loads((self.path / "build" / "contracts" / f"{name}.json").read_text()))


@dataclass(frozen=True)
class Compiled:
    project: Project
    setup_out: str
    compile_out: str


@dataclass(frozen=True)
class Devnet:
    project: Project
    info: devnet.DevnetInfo
    record: Path
    setup_out: str


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for name in LINKED:
        (dest / name).symlink_to(ROOT / name)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    # The set-up script installs .venv-brownie once (minutes); in the copy it is linked, not reinstalled.
    subprocess.run(["bash", str(ROOT / "scripts" / "setup_brownie.sh")], check=True, timeout=900,
                   env={**os.environ, "HOME": str(tmp_path_factory.mktemp("setup-home"))})
    path, home = tmp_path_factory.mktemp("clone"), tmp_path_factory.mktemp("home")
    _copy_checkout(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GENSYN_", "SOLCX_", "BROWNIE_"))}
    env.update({
        "HOME": str(home),
        "SOLCX_BINARY_PATH": str(path / ".venv-brownie" / "solcx"),
        "PATH": f"{path / '.venv-brownie' / 'bin'}:{os.environ['PATH']}",
    })
    if "GENSYN_TEST_SESSION" in os.environ:  # the conftest's marker of processes this run started
        env["GENSYN_TEST_SESSION"] = os.environ["GENSYN_TEST_SESSION"]
    return Project(path, home, env)


@pytest.fixture(scope="module")
def compiled(project: Project) -> Compiled:
    assert not (project.path / "build").exists() and not any(project.home.iterdir())
    setup_out = project.setup()
    return Compiled(project, setup_out, project.brownie("compile").stdout)


@pytest.fixture(scope="module")
def devnet_up(compiled: Compiled) -> Iterator[Devnet]:
    project = compiled.project
    devnet_dir, deployments_dir = project.path / ".devnet", project.path / "deployments"
    gensyn = [str(ROOT / ".venv" / "bin" / "gensyn"), "devnet"]
    env = {"GENSYN_DEVNET_DIR": str(devnet_dir), "GENSYN_DEPLOYMENTS_DIR": str(deployments_dir)}
    project.run(*gensyn, "up", "--port", str(free_port()), env=env)
    try:
        info = devnet.read_info(devnet_dir)
        assert info is not None
        config = project.path / "brownie-config.yaml"
        text, n = re.subn(r"(?m)^(\s+host: )http://127\.0\.0\.1:8545$", rf"\g<1>{info.url}", config.read_text())
        assert n == 1, "brownie-config.yaml should declare gensyn-anvil's host once"
        config.write_text(text)
        yield Devnet(project, info, deployments_dir / f"{info.chain_id}.json", project.setup())
    finally:
        project.run(*gensyn, "down", env=env)


def _code(w3: Web3, address: str) -> str:
    return bytes(w3.eth.get_code(Web3.to_checksum_address(address))).hex()


def _without_metadata(code: str) -> str:
    """Runtime code less solc's CBOR metadata (its length is the last two bytes)."""
    return code[: -(int(code[-4:], 16) + 2) * 2]


def _assert_is_deployed_code(artifact: dict[str, Any], code: str, libraries: dict[str, str]) -> None:
    """`code` is brownie's `artifact` deployed: each link reference holds the library's address in
    `libraries`, and every other byte is the artifact's, but for immutables (zero in the artifact)
    and the metadata hash."""
    expected, actual = _without_metadata(artifact["deployedBytecode"]), _without_metadata(code)
    assert len(expected) == len(actual)
    for refs in artifact["deployedLinkReferences"].values():
        for lib, spans in refs.items():
            for span in spans:
                start, end = 2 * span["start"], 2 * (span["start"] + span["length"])
                assert actual[start:end] == libraries[lib][2:].lower(), f"{lib} link at byte {span['start']}"
                expected = expected[:start] + actual[start:end] + expected[end:]
    differing = [i for i in range(0, len(expected), 2) if expected[i : i + 2] != actual[i : i + 2]]
    assert all(expected[i : i + 2] == "00" for i in differing), "code differs outside immutables"


def test_fresh_clone_sets_up_and_compiles(compiled: Compiled) -> None:
    project = compiled.project
    assert "Project has been compiled" in compiled.compile_out
    assert f"brownie network {NETWORK}: added to http://127.0.0.1:8545 (chain 31337)" in compiled.setup_out
    for name in ("GensynToken", "NodeRegistry", "TaskPool", "DisputeCommittee", "Units", "Disputes",
                 "DataAvailability", "Phases"):
        assert project.artifact(name)["deployedBytecode"], name
    assert not (project.home / ".solcx").exists(), "the compiler comes from .venv-brownie/solcx, not ~/.solcx"


def test_network_host_comes_from_brownie_config(devnet_up: Devnet) -> None:
    project, url = devnet_up.project, devnet_up.info.url
    assert f"brownie network {NETWORK}: updated to {url} (chain 31337)" in devnet_up.setup_out
    listed = project.brownie("networks", "list", "true").stdout
    assert f"host: {url}" in re.sub(r"\x1b\[[0-9;]*m", "", listed)
    # Edited again but not copied into brownie's list: the deploy script stops before deploying.
    config = project.path / "brownie-config.yaml"
    original = config.read_text()
    try:
        config.write_text(original.replace(url, "http://127.0.0.1:1"))
        proc = project.brownie("run", "scripts/deploy.py", "--network", NETWORK, check=False)
    finally:
        config.write_text(original)
    assert proc.returncode != 0
    assert "run `bash scripts/setup_brownie.sh`" in proc.stdout + proc.stderr


def test_console_attaches_taskpool_of_the_devnet(devnet_up: Devnet) -> None:
    project, deployment = devnet_up.project, devnet_up.info.deployment
    pool, contracts = deployment["contracts"]["TaskPool"], deployment["contracts"]
    lines = [
        f'pool = TaskPool.at("{pool}")',
        "import json",
        'print("RESULT " + json.dumps({"token": pool.token(), "registry": pool.registry(), '
        '"resolver": pool.resolver(), "owner": pool.owner(), "nextJobId": pool.nextJobId(), '
        '"params": list(pool.params())}))',
    ]
    proc = project.brownie("console", "--network", NETWORK, stdin="\n".join(lines) + "\n")
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert not re.search(r"\b\w+(Error|Exception)\b", out), out[-3000:]
    results = re.findall(r"^RESULT (\{.*\})\s*$", out, re.MULTILINE)
    assert results, out[-3000:]
    got = json.loads(results[-1])
    assert got == {
        "token": contracts["GensynToken"],
        "registry": contracts["NodeRegistry"],
        "resolver": contracts["DisputeCommittee"],
        "owner": Account.from_key(DEV_KEYS[0]).address,
        "nextJobId": got["nextJobId"],
        "params": [DEFAULT_PARAMS[k] for k in POOL_FIELDS],
    }
    w3 = Web3(Web3.HTTPProvider(devnet_up.info.url))
    _assert_is_deployed_code(project.artifact("TaskPool"), _code(w3, pool), deployment["libraries"])


def test_deploy_script_keeps_the_devnet_record(devnet_up: Devnet) -> None:
    project, record = devnet_up.project, devnet_up.record
    devnet_record = record.read_bytes()
    own = project.path / "deployments" / "brownie" / "31337.json"
    w3 = Web3(Web3.HTTPProvider(devnet_up.info.url))
    deployer = Account.from_key(DEV_KEYS[0]).address
    # A user whose shell points the gensyn CLI at the devnet's records.
    cli_env = {"GENSYN_DEPLOYMENTS_DIR": str(record.parent)}

    out = project.brownie("run", "scripts/deploy.py", "--network", NETWORK, env=cli_env).stdout
    assert f"deployed to chain 31337; record written: {own}" in out
    assert record.read_bytes() == devnet_record
    info = json.loads(own.read_text())
    assert set(info["contracts"].values()).isdisjoint(devnet_up.info.deployment["contracts"].values())
    pool = w3.eth.contract(address=info["contracts"]["TaskPool"], abi=project.artifact("TaskPool")["abi"])
    assert pool.functions.resolver().call() == info["contracts"]["DisputeCommittee"]
    _assert_is_deployed_code(project.artifact("TaskPool"), _code(w3, pool.address), info["libraries"])

    # Again: its own record is of a live deployment, so nothing is deployed and nothing written.
    nonce, own_record = w3.eth.get_transaction_count(deployer), own.read_bytes()
    proc = project.brownie("run", "scripts/deploy.py", "--network", NETWORK, env=cli_env, check=False)
    assert proc.returncode != 0
    assert f"{own} already records a deployment on chain 31337" in proc.stdout + proc.stderr
    assert (w3.eth.get_transaction_count(deployer), own.read_bytes()) == (nonce, own_record)

    out = project.brownie("run", "scripts/deploy.py", "main", "overwrite", "--network", NETWORK, env=cli_env).stdout
    assert f"record replaced: {own}" in out
    assert json.loads(own.read_text())["contracts"] != info["contracts"]
    assert record.read_bytes() == devnet_record
