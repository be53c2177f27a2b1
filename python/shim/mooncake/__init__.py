"""Opt-in shim: put this folder on sys.path (or PYTHONPATH) to run code that imports
`mooncake.store` on Yuebing. It is not installed by default, so a real Mooncake install is never
shadowed; and it is a namespace-extending package, so that where a real Mooncake is installed too,
its other modules (`mooncake.engine`, its pure-Python ones) stay importable beside this `store`."""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
