"""Validation and grading of submissions (generic rules, parallel scoring, reports)."""

from rexmle.grading.grader import grade_submission, validate_submission
from rexmle.grading.report import GradeReport, ValidationResult, read_grade_report

__all__ = [
    "GradeReport",
    "ValidationResult",
    "grade_submission",
    "read_grade_report",
    "validate_submission",
]
