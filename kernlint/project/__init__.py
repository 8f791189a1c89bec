"""The project index: launches, instantiations and include edges of every CUDA/C++ file of a project.

A cheap text scan (no libclang: the front end stays the only place that parses), cached on disk by
file content. The engine asks it one thing per linted file: `ProjectIndex.context_for(path)`.
"""
from kernlint.project.index import FileContext, ProjectIndex, ProjectLaunch, find_project_root, load_index

__all__ = ["FileContext", "ProjectIndex", "ProjectLaunch", "find_project_root", "load_index"]
