"""The console's entry page (placeholder: its routes are added by the page's own work)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
