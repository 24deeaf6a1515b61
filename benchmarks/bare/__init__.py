"""The bare floor: the same authenticated API call in a Django project with
nothing of ours around it (benchmarks/bare/settings.py). See docs/benchmarks.md."""
