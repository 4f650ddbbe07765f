"""2. Load-weights simulation: what a release's loader does with every key, and the fixer.

- `replay`: every key's fate and every parameter's state, as saved and if config.json is rewritten;
- `findings`: what the replay means (silent drops, crashes, parameters left at init);
- `rewrite`: the streamed, verified fixer; `header_fix` its header-only path, `undo` the record
  that makes an in-place patch undoable, `atomic` the write-verify-fsync-rename every write takes.
"""
