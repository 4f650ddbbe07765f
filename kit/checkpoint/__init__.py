"""1. Key inspection: what a checkpoint holds, read headers first.

- `header`: the safetensors header format and its checks, for files on disk and the Hub alike;
- `files`: safetensors headers, sharded indexes, folders, the HF cache, `.bin` (weights only);
- `hub`: a Hub repo id resolved to the cache or read from the Hub by range;
- `config`: draft and target configs as every trainer writes them;
- `formats`: which trainer wrote a checkpoint, and the renames between layouts;
- `inspection`: the inspect findings (keys, shapes, sampled statistics, d2t);
- `draft`: a draft opened once (`open_draft`: checkpoint, config, format, layout), the value every
  analysis of a command takes.
"""

from kit.checkpoint.draft import Draft, open_draft

__all__ = ["Draft", "open_draft"]
