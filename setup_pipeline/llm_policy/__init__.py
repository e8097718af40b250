"""The LLM setup policy (Agent K, sections 3.1.2-3.1.3): prompts from working memory, a compact
view of raw/, the hybrid expert+LLM policy, and credit assignment for failed meta checks."""

from setup_pipeline.llm_policy.credit_assignment import (
    assign_blame,
    covered_code,
    judge_stages,
)
from setup_pipeline.llm_policy.data_view import build_data_view
from setup_pipeline.llm_policy.policy import HybridPolicy, LLMPolicy

__all__ = ["HybridPolicy", "LLMPolicy", "assign_blame", "build_data_view", "covered_code", "judge_stages"]
