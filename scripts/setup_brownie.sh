#!/usr/bin/env bash
# Creates .venv-brownie: eth-brownie 1.22.2 pins web3==7.16.0, eth-account==0.13.7,
# pytest==9.1.1 and hypothesis==6.27.3. It lives apart from .venv so the main
# suite keeps a current hypothesis. It also gets a `solc` on its PATH: a thin
# wrapper over the pinned solcjs, so py-solc-x's import_installed_solc() finds
# the same compiler version the project builds with.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=.venv-brownie
if [ ! -f "$venv/.installed" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check eth-brownie==1.22.2
  touch "$venv/.installed"
fi
cat > "$venv/bin/solc" <<WRAP
#!/usr/bin/env bash
SOLC_INCLUDE="$root:$root/node_modules" exec node "$root/gensyn_py/devnet/solc_cli.cjs" "\$@"
WRAP
chmod +x "$venv/bin/solc"
if ! grep -qE "^\s*id: gensyn-anvil\s*$" "$HOME/.brownie/network-config.yaml" 2>/dev/null; then
  "$venv/bin/brownie" networks add Ethereum gensyn-anvil host=http://127.0.0.1:8545 chainid=31337 >/dev/null
fi
