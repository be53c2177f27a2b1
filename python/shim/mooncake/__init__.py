"""Opt-in shim: put this folder on sys.path (or PYTHONPATH) to run code that imports
`mooncake.store` on Yuebing. It is not installed by default, so a real Mooncake install is never
shadowed."""
