"""Alembic migrations of the gateway's session store (shipped as package data).

`roller.gateway.store.engine.migrate(engine)` runs them to head when the gateway or a
`roller sessions` command opens a database; developers create a revision with
`alembic -c src/roller/gateway/migrations/alembic.ini revision -m "..."` and write it by
hand against `roller.gateway.store.models` (a test checks that head equals the models).
"""
