"""The ratings: the consumer that folds finished matches into ratings and the reputation
fold, the recompute, their reads, and the operator and public routes over them (the models
themselves are pure: domain/ratings.py)."""
