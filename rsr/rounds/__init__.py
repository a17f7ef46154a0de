"""Self-improvement rounds: factory -> train -> evaluate, R times, each round's model serving
the next round's rollouts (`rsr rounds CONFIG`). Above factory, training, rl and report."""
