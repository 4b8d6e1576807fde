#!/usr/bin/env bash
# Sets brownie up for this project; safe to run again (it is quick once installed).
#
# 1. .venv-brownie: eth-brownie 1.22.2, which pins web3==7.16.0, eth-account==0.13.7,
#    pytest==9.1.1 and hypothesis==6.27.3. It lives apart from .venv so the main
#    suite keeps a current hypothesis. brownie is installed as plain Python
#    (BROWNIE_NOCOMPILE=1 with its source distribution, the install mode its
#    setup.py offers): the mypyc-compiled wheel of 1.22.2 checks annotations at
#    run time, and `brownie.network.state._add_deployment` annotates a project
#    contract's sources as `dict`, so `TaskPool.at(address)` on a live network
#    fails there with "TypeError: dict object expected; got
#    brownie.project.sources.Sources".
#
# 2. A solc for brownie. brownie only compiles with a solc that py-solc-x lists as
#    installed: a file named solc-v<version> in py-solc-x's install folder, which
#    is ~/.solcx unless the environment variable SOLCX_BINARY_PATH names another.
#    Otherwise brownie tries to download one from GitHub. So this script writes a
#    thin `solc` wrapper over the pinned solcjs (node_modules/solc, the compiler
#    the project builds with) to .venv-brownie/solcx/solc-v<version>, and brownie
#    is run with
#      SOLCX_BINARY_PATH="$PWD/.venv-brownie/solcx"
#    (the README and tests/integration/test_brownie.py do). Nothing goes to ~/.solcx.
#
# 3. The networks. brownie 1.22.2 reads a network's host and chain id only from
#    its own list, ~/.brownie/network-config.yaml; the `networks:` section of
#    brownie-config.yaml can set a network's gas and other settings but not where
#    it is. So the project keeps `host` and `chainid` of `gensyn-anvil` in
#    brownie-config.yaml and this script copies them into brownie's list
#    (scripts/sync_brownie_networks.py, through `brownie networks add|modify`).
#    After changing them in brownie-config.yaml, run this script again.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-brownie
brownie_version=1.22.2
install_mark="eth-brownie==$brownie_version BROWNIE_NOCOMPILE=1"
if [ ! -f node_modules/solc/package.json ]; then
  echo "node_modules/solc is missing: run \`make setup\` first" >&2
  exit 1
fi
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$install_mark" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  BROWNIE_NOCOMPILE=1 "$venv/bin/pip" install --quiet --disable-pip-version-check \
    --no-binary eth-brownie "eth-brownie==$brownie_version"
  # A compiled brownie left by an earlier version of this script: replace it.
  if [ -n "$(find "$venv"/lib/python3*/site-packages/brownie -name '*.so' -print -quit)" ]; then
    BROWNIE_NOCOMPILE=1 "$venv/bin/pip" install --quiet --disable-pip-version-check \
      --force-reinstall --no-deps --no-binary eth-brownie "eth-brownie==$brownie_version"
  fi
  echo "$install_mark" > "$venv/.installed"
fi
version=$(node -p 'require("./node_modules/solc/package.json").version')
solcx_dir="$venv/solcx"
mkdir -p "$solcx_dir"
# An earlier version of this script put the wrapper on the venv's PATH as `solc`;
# py-solc-x's import_installed_solc() would copy it from there into ~/.solcx.
rm -f "$venv/bin/solc"
# The wrapper finds the checkout from its own path (<root>/.venv-brownie/solcx/), so
# it keeps working if the checkout moves. Written aside and renamed: a brownie
# running now never sees half a file.
cat > "$solcx_dir/.solc-v$version.tmp" <<'WRAP'
#!/usr/bin/env bash
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SOLC_INCLUDE="$root:$root/node_modules" exec node "$root/gensyn_py/devnet/solc_cli.cjs" "$@"
WRAP
chmod +x "$solcx_dir/.solc-v$version.tmp"
mv -f "$solcx_dir/.solc-v$version.tmp" "$solcx_dir/solc-v$version"
if ! "$solcx_dir/solc-v$version" --version | grep -q "Version: $version+"; then
  echo "$solcx_dir/solc-v$version does not report solc $version" >&2
  exit 1
fi
"$venv/bin/python" scripts/sync_brownie_networks.py
