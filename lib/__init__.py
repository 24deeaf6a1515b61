"""Plumbing that knows no app: field encryption, the outbound-HTTP guard,
leasing and back-off for background work, enqueueing jobs by name, admin
building blocks. Nothing here imports a project app (an import-linter contract
checks it); every app may use it."""
