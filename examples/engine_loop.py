#!/usr/bin/env python3
"""A minimal engine scheduler loop on kvtopo: plan, admit, allocate, preempt, decode, free.

Run: PYTHONPATH=build/python python3 examples/engine_loop.py   (or after `pip install .`)

The scheduler side owns one KVCacheManager; each DCP rank owns one BlockTable per cache group
and computes its own slot mapping. Here rank 0's tables stand in for the workers.
"""

import kvtopo

# A DCP-4 launch of a small MLA model; the pool is cut to 24 blocks so preemption happens.
plan = kvtopo.plan("kimi-k2.6", tensor_parallel_size=4, decode_context_parallel_size=4,
                   max_model_len=4096, kv_cache_memory="256MiB", block_size=16,
                   max_num_seqs=8)
manager = kvtopo.KVCacheManager(plan, num_blocks=24)
MAX_ROWS = 8
LOOKAHEAD = plan.num_lookahead_tokens or 2  # draft-token slots reserved each decode step
RANK = 0
tables = [kvtopo.BlockTable(group.geometry, MAX_ROWS) for group in plan.groups]

# (request id, prompt, tokens to generate); two share a prefix for a prefix-cache hit.
shared = list(range(500, 700))
waiting = [(f"req-{i}", shared + list(range(i * 1000, i * 1000 + 60 + 40 * i)), 40 + 20 * i)
           for i in range(6)]
running = {}  # request id -> {"row": int, "left": tokens still to generate}
free_rows = list(range(MAX_ROWS - 1, -1, -1))
preemptions = finished = steps = 0


def write_rows(request_id, row):
    """Worker side: apply the manager's row updates to this rank's block tables."""
    for g, table in enumerate(tables):
        first_column, block_ids = manager.last_update(request_id, g)
        table.write_from(row, first_column, block_ids)


def preempt(request_id):
    global preemptions
    state = running.pop(request_id)
    manager.free(request_id)
    for table in tables:
        table.clear_row(state["row"])
    free_rows.append(state["row"])
    waiting.insert(0, (request_id, state["prompt"], state["left"]))
    preemptions += 1


while waiting or running:
    steps += 1
    manager.new_step()
    scheduled = []  # (request id, first position, number of tokens)

    # 1. Running requests decode one token each, reserving lookahead slots for drafts.
    for request_id in list(running):
        if request_id not in running:
            continue  # preempted below
        state = running[request_id]
        while manager.allocate_slots(request_id, 1, num_lookahead_tokens=LOOKAHEAD) is None:
            victim = list(running)[-1]  # the newest running request
            preempt(victim)
            if victim == request_id:
                break
        if request_id in running:
            write_rows(request_id, state["row"])
            scheduled.append((request_id, manager.num_computed_tokens(request_id) - 1, 1))

    # 2. Admit waiting requests while rows and blocks last.
    while waiting and free_rows:
        request_id, prompt, left = waiting[0]
        manager.add_request(request_id, prompt)
        num_hit, _ = computed = manager.get_computed_blocks(request_id)
        new_blocks = manager.allocate_slots(request_id, len(prompt) - num_hit, num_hit, computed,
                                            num_lookahead_tokens=0)
        if new_blocks is None:  # not enough blocks: try again next step
            manager.free(request_id)
            break
        waiting.pop(0)
        row = free_rows.pop()
        running[request_id] = {"row": row, "left": left, "prompt": prompt}
        write_rows(request_id, row)
        scheduled.append((request_id, num_hit, len(prompt) - num_hit))

    # 3. Worker (rank 0): slot mapping of the scheduled tokens for the sharded group.
    for request_id, start, count in scheduled:
        slots = tables[0].slot_mapping(running[request_id]["row"], RANK,
                                       range(start, start + count))
        assert len(slots) == count

    # 4. "Sample" one token per scheduled request; finished requests leave.
    for request_id, _, _ in scheduled:
        state = running[request_id]
        manager.append_tokens(request_id, [state["left"]])
        state["prompt"] = state["prompt"] + [state["left"]]
        state["left"] -= 1
        if state["left"] == 0:
            running.pop(request_id)
            manager.free(request_id)
            for table in tables:
                table.clear_row(state["row"])
            free_rows.append(state["row"])
            finished += 1
    manager.check_invariants()

# Every block is back (prefix-cached ones stay evictable and count as free).
assert manager.num_free_blocks == manager.num_blocks - 1
print(f"finished {finished} requests in {steps} steps with {preemptions} preemptions; "
      f"prefix-cache hits: {manager.prefix_cache_stats['hit_tokens']} tokens")
