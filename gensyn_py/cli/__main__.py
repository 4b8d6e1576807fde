from gensyn_py.cli.main import cli

# Guarded: a helper process started with `spawn` (proof/hash_process.py) imports this module as __mp_main__.
if __name__ == "__main__":
    cli()
