"""``memframe scan``: secrets in files, directory trees, JSONL transcripts and the team database.

The modules are small and import-light:

- :mod:`~memframe.scanning.ignore` — the common ``.gitignore`` subset (also ``.memframeignore``);
- :mod:`~memframe.scanning.walk` — inputs: files, directories walked under their ignore files;
- :mod:`~memframe.scanning.hits` — findings placed in their file (line, column, inline allow);
- :mod:`~memframe.scanning.windows` — huge files scanned in overlapping windows (bounded memory);
- :mod:`~memframe.scanning.jsonl` — JSONL records, every decoded string value;
- :mod:`~memframe.scanning.teamdb` — the team server's SQLite database;
- :mod:`~memframe.scanning.runner` — batching, redacted copies, progress;
- :mod:`~memframe.scanning.baseline` and :mod:`~memframe.scanning.formats` — what is reported.
"""
