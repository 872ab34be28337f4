"""A stand-in for matplotlib in the harness's hermetic tests (the host has no matplotlib): only
what the harness's figure capture touches, with matplotlib's own figure lifetime, including the
atexit handler of matplotlib._pylab_helpers that closes every figure at interpreter exit."""
