"""The project index: launches, instantiations and include edges of every CUDA/C++ file of a project.

May import kernlint.frontend and below (the layers: tests/test_layers.py).

A cheap text scan of every file (scan.py), and for the files that spell a launch or an explicit
instantiation the front end's own launch reader (clang_scan.py: clang's view of constants), cached on
disk by file content. The engine asks it about one file at a time: its context, the launches and
instantiations of its kernels anywhere in the project, and the kernels it reaches in other files
(reach.py).
"""
from kernlint.project.index import FileContext, ProjectIndex, ProjectLaunch, find_project_root, load_index

__all__ = ["FileContext", "ProjectIndex", "ProjectLaunch", "find_project_root", "load_index"]
