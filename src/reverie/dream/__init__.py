"""The dream: the scheduler, gates, lease and ledger that run consolidation passes while an agent is idle (seed 001)."""
