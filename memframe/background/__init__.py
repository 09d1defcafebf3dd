"""Background work: the executor slow layer work runs on (``executor``) and one job at a time
per session with at most one waiting (``serial``)."""
