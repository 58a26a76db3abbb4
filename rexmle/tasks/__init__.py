"""What every challenge family and the grading pipeline share, knowing no task.

``spec`` (the YAML model), ``registry`` (discovery of task folders and their functions),
``folders`` (a prepared task's folders), ``submission`` and ``rows`` (what crosses the family
functions), ``jobs`` (the arguments of those functions), and the leaf helpers: ``csvfile``,
``paths`` (the one path-safety module), ``checks`` (validity of submitted images), ``files``,
``parallel`` and ``reasons``. Nothing here imports a family or the grading pipeline.
"""
