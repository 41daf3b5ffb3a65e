def replicate(strategy, step, batch):
    """Runs `step` on every replica.

        >>> replicate(strategy, step, batch)  # same as strategy.experimental_run_v2(step, (batch,))
        >>> strategy.run(step, args=(batch,))
    """
    return strategy.run(step, args=(batch,))
