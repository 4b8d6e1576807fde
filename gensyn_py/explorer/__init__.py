"""`gensyn explorer`: an index of the protocol's events in SQLite and a live web app over it.

`indexer.py` follows the chain with one cursor (as the daemons do) and drops what a reorg
or a restarted chain took back; `content.py` fetches what events only name (specs, the
losses at committed checkpoints); `queries.py` turns the index into page models (`games.py`
those of the dispute game's disputes);
`app.py` serves them, and `server.py` runs indexer and web server together.
"""
