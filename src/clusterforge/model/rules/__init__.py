"""The rules an inventory must pass, grouped by family; model/resolve.py runs them all and reports every problem."""
