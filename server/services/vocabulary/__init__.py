"""The words services and adapters share: models.py (every request and result), errors.py (one error model: a
service's exception names its kind), boundary.py (the trust boundary's markers around retrieved text). Imports
nothing of the other rooms, so every room may import it."""
