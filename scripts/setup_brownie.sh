#!/usr/bin/env bash
# Creates .venv-brownie: eth-brownie 1.22.2 pins web3==7.16.0, eth-account==0.13.7,
# pytest==9.1.1 and hypothesis==6.27.3. It lives apart from .venv so the main
# suite keeps a current hypothesis.
#
# brownie only compiles with a solc that py-solc-x lists as installed: a file
# named solc-v<version> in py-solc-x's install folder, which is ~/.solcx unless
# the environment variable SOLCX_BINARY_PATH names another. Otherwise brownie
# tries to download one from GitHub. So this script writes a thin `solc` wrapper
# over the pinned solcjs (node_modules/solc, the compiler the project builds
# with) to .venv-brownie/solcx/solc-v<version>, inside the repository, and
# brownie is run with
#   SOLCX_BINARY_PATH="$PWD/.venv-brownie/solcx"
# (the README and tests/integration/test_brownie.py do). Nothing goes to ~/.solcx.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=.venv-brownie
if [ ! -f "$venv/.installed" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check eth-brownie==1.22.2
  touch "$venv/.installed"
fi
if [ ! -f node_modules/solc/package.json ]; then
  echo "node_modules/solc is missing: run \`make setup\` first" >&2
  exit 1
fi
version=$(node -p 'require("./node_modules/solc/package.json").version')
solcx_dir="$root/$venv/solcx"
mkdir -p "$solcx_dir"
# An earlier version of this script put the wrapper on the venv's PATH as `solc`;
# py-solc-x's import_installed_solc() would copy it from there into ~/.solcx.
rm -f "$venv/bin/solc"
cat > "$solcx_dir/solc-v$version" <<WRAP
#!/usr/bin/env bash
SOLC_INCLUDE="$root:$root/node_modules" exec node "$root/gensyn_py/devnet/solc_cli.cjs" "\$@"
WRAP
chmod +x "$solcx_dir/solc-v$version"
if ! "$solcx_dir/solc-v$version" --version | grep -q "Version: $version+"; then
  echo "$solcx_dir/solc-v$version does not report solc $version" >&2
  exit 1
fi
# brownie keeps its network list in ~/.brownie/network-config.yaml (it creates ~/.brownie).
if ! grep -qE "^\s*id: gensyn-anvil\s*$" "$HOME/.brownie/network-config.yaml" 2>/dev/null; then
  "$venv/bin/brownie" networks add Ethereum gensyn-anvil host=http://127.0.0.1:8545 chainid=31337 >/dev/null
fi
