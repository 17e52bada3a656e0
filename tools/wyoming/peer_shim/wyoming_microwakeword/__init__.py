"""A stand-in for the `wyoming_microwakeword` package: `python -m wyoming_microwakeword ARGS`
runs `neon serve --engine micro ARGS` (the binary named by $NEON), so that a test written for
wyoming-microwakeword 2.1.0 drives neon unchanged (tools/wyoming/test.sh)."""
