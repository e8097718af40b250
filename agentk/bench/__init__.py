"""`agentk bench`: agentk and its rivals side by side on competitions with known answers (top floor)."""
