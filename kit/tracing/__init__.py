"""3. Hidden-state tracing: which target states reach the draft, at what width, and whether `fc` runs.

- `capture`: the target layers a release captures for a target class;
- `draft`: the reference EAGLE-3 draft module, with a named hook on every tensor that crosses a step;
- `shapes`: the trace itself, at full scale on the meta device.
- `positions`: the RoPE positions a release runs the chain's draft steps at, and what late ones cost.
"""
