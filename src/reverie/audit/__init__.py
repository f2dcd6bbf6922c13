"""The memory audit (seed 001, "Is any of this working?")."""

from reverie.audit.audit import AuditConfig, AuditRecord, MemoryAudit

__all__ = ["AuditConfig", "AuditRecord", "MemoryAudit"]
