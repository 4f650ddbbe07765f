#!/bin/sh
# The incident's server launch, reconstructed from the incident report (the team's own script was
# not kept): sglang 0.5.10, tensor parallel 8, CUDA graphs off (earlier EAGLE-3 launches hung in
# graph capture), an EAGLE-3 chain of 4 steps with topk 1 (5 draft tokens, the root included).
# Read by `python -m kit deployment --launch data/incident/launch.sh`; never run by the kit.
python -m sglang.launch_server \
  --model-path moonshotai/Kimi-K2.5 \
  --trust-remote-code \
  --tp-size 8 \
  --disable-cuda-graph \
  --speculative-algorithm EAGLE3 \
  --speculative-draft-model-path /models/kimi-k2.5-eagle3 \
  --speculative-num-steps 4 \
  --speculative-eagle-topk 1 \
  --speculative-num-draft-tokens 5 \
  --host 0.0.0.0 \
  --port 30000
