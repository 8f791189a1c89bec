"""Package discovery (all other metadata is in pyproject.toml).

Every directory under kernlint/ is a package, with or without an `__init__.py`, so a new module or
subpackage is shipped without editing a list. The rule documentation
lives in the top-level rules/ directory and is shipped as the package `kernlint.rules`; pyproject's
declarative `packages.find` cannot add a package from outside the searched tree, hence this file.
"""
from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["kernlint", "kernlint.*"], exclude=["*.__pycache__"]),
              "kernlint.rules"],
    package_dir={"kernlint.rules": "rules"},
)
