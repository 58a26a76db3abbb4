"""Validation and grading of submissions (generic rules, parallel scoring, reports)."""

from rexmle.grading.grader import grade_submission, validate_submission
from rexmle.grading.report import GradeReport, ValidationResult

__all__ = ["GradeReport", "ValidationResult", "grade_submission", "validate_submission"]
