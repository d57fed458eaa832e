"""Work dealt by weight: the tasks of a pass into Spark tasks (``passes``), the keys of a bucket of
timeline events into the parts a fold takes at once (``timelines``)."""


def deal(weights: dict[int, int], count: int) -> list[list[int]]:
    """Task ids dealt into ``count`` groups of about equal weight, heaviest first (so the last
    tasks to start are small ones)."""
    groups: list[tuple[int, list[int]]] = [(0, []) for _ in range(min(count, len(weights)))]
    for task in sorted(weights, key=lambda t: (-weights[t], t)):
        load, members = groups.pop(0)
        members.append(task)
        groups.append((load + weights[task], members))
        groups.sort(key=lambda g: g[0])
    return sorted((m for _, m in groups), key=lambda m: -sum(weights[t] for t in m))
