"""Campaigns: unattended runs over many competitions, ordered by the curriculum (issue #14)."""
