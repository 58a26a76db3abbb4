"""Human leaderboards (team + metric values) of every task, one CSV per task id."""
