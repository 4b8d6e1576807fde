from gensyn_py.cli.main import cli

cli()
