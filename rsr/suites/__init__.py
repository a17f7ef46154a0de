"""The Inspect assembly of task suites: registry and pins, @task definitions, the quality gate."""
