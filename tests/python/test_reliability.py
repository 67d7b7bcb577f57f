"""Python arguments that once crashed the interpreter or were read wrongly: each is an exception
naming the argument and its range (docs/reliability.md)."""

import array
import copy
import gc
import subprocess
import sys
import unittest

import kvtopo


class ReliabilityTest(unittest.TestCase):
    def setUp(self):
        self.plan = kvtopo.plan("kimi-k2.6", tensor_parallel_size=4,
                                decode_context_parallel_size=4, max_model_len=4096,
                                kv_cache_memory="256MiB", block_size=16)
        self.group = self.plan.groups[0]

    def test_plan_block_size_beyond_the_bound(self):
        # Was SIGFPE, killing the interpreter.
        with self.assertRaises(ValueError) as e:
            kvtopo.plan("glm-5.3-flash", block_size=4611686018427387904)
        self.assertEqual(str(e.exception),
                         "block_size must be in [1, 1048576], got 4611686018427387904")

    def test_plan_max_num_seqs_beyond_the_bound(self):
        with self.assertRaises(ValueError) as e:
            kvtopo.plan(max_num_seqs=2**40)
        self.assertEqual(str(e.exception),
                         "max_num_seqs must be in [1, 1048576], got 1099511627776")

    def test_block_table_append_past_int32(self):
        # Wrote -1 into the table: the guard overflowed.
        table = kvtopo.BlockTable(self.group, num_rows=2)
        with self.assertRaises(ValueError) as e:
            table.append(0, [2**63 - 1])
        self.assertEqual(str(e.exception), "block id 9223372036854775807 is negative or its "
                                           "kernel blocks overflow int32")
        self.assertEqual(table.row_length(0), 0)
        self.assertEqual(list(table.row(0))[:2], [0, 0])

    def test_worker_arguments_name_the_bad_value(self):
        geometry = self.group.geometry
        table = kvtopo.BlockTable(self.group, num_rows=2)
        for call, message in [
                (lambda: kvtopo.BlockTable(self.group, num_rows=0),
                 "num_rows must be in [1, 2^31), got 0"),
                (lambda: table.slot_mapping(0, 0, [3, -1]),
                 "positions must be non-negative, got -1"),
                (lambda: kvtopo.holds_position(geometry, 0, -1),
                 "position must be non-negative, got -1"),
                (lambda: kvtopo.local_seq_len(geometry, 0, -1),
                 "seq_len must be non-negative, got -1"),
                (lambda: kvtopo.local_seq_len(geometry, 4, 1),
                 "rank must be in [0, 4) (the DCP size), got 4")]:
            with self.assertRaises(ValueError) as e:
                call()
            self.assertEqual(str(e.exception), message)

    def test_block_table_too_large(self):
        with self.assertRaises(ValueError) as e:
            kvtopo.BlockTable(self.group, num_rows=2**31 - 1)
        self.assertEqual(str(e.exception),
                         "num_rows 2147483647 x block_table_width %d is more than the 268435456 "
                         "entries a table may hold" % self.group.geometry.block_table_width)

    def test_slot_mapping_negative_kernel_block(self):
        # Returned -80 and -79.
        with self.assertRaises(ValueError) as e:
            kvtopo.slot_mapping(self.group.geometry, 0, [-5], [0, 1, 2, 3])
        self.assertEqual(str(e.exception),
                         "kernel_row[0] is -5; kernel block ids are non-negative")

    def test_slot_mapping_num_slots_bound(self):
        with self.assertRaises(ValueError) as e:
            kvtopo.slot_mapping(self.group.geometry, 0, [5], [0], num_slots=2**40)
        self.assertEqual(str(e.exception),
                         "num_slots must be in [len(positions), 268435456], got 1099511627776")

    def test_to_json_indent_is_bounded(self):
        # An indent above 512 spaces outran the JSON library's indent buffer: a segfault in
        # Plan.to_json(100000), found by tests/python/test_random_args.py.
        plan = kvtopo.plan("qwen3-next-80b", tensor_parallel_size=4, max_model_len=4096,
                           kv_cache_memory="8GiB")
        self.assertEqual(plan.to_json(64).count("\n" + " " * 64 + '"'), 20)  # the top-level keys
        for obj in (plan, kvtopo.check("qwen3-next-80b", tensor_parallel_size=4)):
            with self.assertRaises(ValueError) as e:
                obj.to_json(100000)
            self.assertEqual(str(e.exception),
                             "indent must be in [-1, 64] (-1: one line), got 100000")
            with self.assertRaises(ValueError) as e:
                obj.to_json(indent=-2)
            self.assertEqual(str(e.exception), "indent must be in [-1, 64] (-1: one line), got -2")

    def test_a_nested_call_from_an_argument_is_refused(self):
        # An argument's __iter__ that called the same manager again overwrote the outer call's
        # handles: the outer call then allocated for the inner call's requests.
        m = kvtopo.KVCacheManager.from_layout(
            {"num_blocks": 64, "max_model_len": 4096,
             "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})
        outer = m.add_requests(["a", "b", "c"], [[1] * 40, [2] * 40, [3] * 40])
        inner = m.add_requests(["x"], [[9] * 40])

        class Counts:
            def __iter__(self):
                m.allocate_slots_batch(inner, 16)
                return iter([16, 16, 16])

        with self.assertRaises(RuntimeError) as e:
            m.allocate_slots_batch(outer, Counts())
        self.assertEqual(
            str(e.exception),
            "KVCacheManager.allocate_slots_batch was called while "
            "KVCacheManager.allocate_slots_batch was running on the same manager (from Python "
            "code its arguments ran: an iterator, __index__, __hash__ or a finalizer); make the "
            "calls one after the other")
        self.assertEqual(m.num_free_blocks, 63)  # neither call allocated
        res = m.allocate_slots_batch(outer, [16, 16, 16])
        self.assertEqual((res.num_failed, list(res.block_ids)), (0, [1, 2, 3]))

        class Name(str):
            def __hash__(self):
                m.free("a")
                return str.__hash__(self)

        with self.assertRaises(RuntimeError) as e:
            m.add_request(Name("y"), [1, 2, 3])
        self.assertTrue(str(e.exception).startswith(
            "KVCacheManager.free was called while KVCacheManager.add_request was running"))
        self.assertIn("a", m)
        m.check_invariants()

    def test_a_memoryview_released_by_a_later_argument(self):
        # num_new_tokens read in place from a memoryview, then num_lookahead_tokens' iterator
        # released the view and freed its memory: the counts were read from freed memory.
        m = kvtopo.KVCacheManager.from_layout(
            {"num_blocks": 64, "max_model_len": 4096,
             "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})
        handles = m.add_requests(["a"], [[1] * 40])
        data = bytearray(array.array("i", [16]).tobytes())
        view = memoryview(data).cast("i")

        class Lookahead:
            def __iter__(self):
                view.release()
                data.extend(bytes(4096))  # moves the bytes the view showed
                return iter([0])

        with self.assertRaises(BufferError) as e:
            m.allocate_slots_batch(handles, view, Lookahead())
        self.assertEqual(str(e.exception), "num_new_tokens: the memoryview was released while "
                                           "the call read its other arguments")
        self.assertEqual(m.num_free_blocks, 63)

    def test_block_ids_whose_iterator_changes_the_table(self):
        # write_from checked first_column against the row, then read the ids, whose __iter__
        # cleared the row: the C++ table's gap check aborted the interpreter.
        table = kvtopo.BlockTable(self.group, 4)
        table.append(0, [1, 2, 3])

        class Ids:
            def __iter__(self):
                table.clear_row(0)
                return iter([7])

        with self.assertRaises(ValueError) as e:
            table.write_from(0, 3, Ids())
        self.assertEqual(str(e.exception),
                         "first_column must be in [0, 0] (a write may not leave a gap), got 3")
        self.assertEqual(table.row_length(0), 0)
        table.check_invariants()

        class Positions:
            def __iter__(self):
                table.append(1, [5])
                return iter([0])

        # The row is read after the positions: the block appended by their iterator is used.
        k = table.kernel_blocks_per_block
        self.assertEqual(list(table.slot_mapping(1, 0, Positions())),
                         [5 * k * self.group.geometry.kernel_block_size])

    def test_an_inspector_keeps_its_manager_alive(self):
        # inspector() was documented to keep the manager alive but did not (py::cast ignores a
        # parent for a moved value): reading it after the manager's last reference went away
        # read freed memory (a segfault or a vector::reserve error).
        inspector = kvtopo.KVCacheManager.from_layout(
            {"num_blocks": 64, "max_model_len": 4096,
             "groups": [{"kind": "full_attention", "block_size": 16,
                         "page_size_bytes": 64}]}).inspector()
        gc.collect()
        churn = [bytearray(100000) for _ in range(100)]
        self.assertEqual(len(inspector.free_queue()), 63)
        self.assertEqual(inspector.free_queue()[:3], [1, 2, 3])
        self.assertEqual(inspector.ref_count(0), 0)
        del churn

    def test_plan_records_copy_without_recursing(self):
        # copy.copy(plan.groups[0]) was a RecursionError: copy probes __setstate__ on an instance
        # whose slots are unset, and __getattr__ read self._fields, which called __getattr__.
        group = self.plan.groups[0]
        self.assertIs(copy.copy(group), group)
        self.assertIs(copy.deepcopy(group), group)
        self.assertEqual(copy.deepcopy({"c": self.plan.capacity})["c"], self.plan.capacity)
        with self.assertRaises(AttributeError) as e:
            group._fields_missing
        self.assertEqual(str(e.exception), "_fields_missing")
        with self.assertRaises(AttributeError) as e:
            self.plan.capacity.no_such_field
        self.assertEqual(str(e.exception), "Capacity has no field 'no_such_field'")

    def test_objects_made_by_new_without_init_refuse_use(self):
        # KVCacheManager.__new__(KVCacheManager) made an instance whose C++ value pybind11
        # allocated on first use without constructing it: every class's methods then ran on
        # uninitialized memory (segfault, or an abort in the block table's check).
        manager_from = "KVCacheManager(...) or KVCacheManager.from_layout(...)"
        uses = {
            kvtopo.KVCacheManager: (manager_from, [lambda o: o.num_free_blocks,
                                                   lambda o: o.allocate_slots_batch([0], [1]),
                                                   lambda o: o.add_request("a", [1, 2])]),
            kvtopo.BlockTable: ("BlockTable(...)", [lambda o: o.num_rows, memoryview]),
            kvtopo.Plan: ("kvtopo.plan(...)", [lambda o: o.accepted, lambda o: o.to_json(),
                                               lambda o: kvtopo.KVCacheManager(o)]),
            kvtopo.GroupGeometry: ("Plan.geometries", [lambda o: o.block_size,
                                                       lambda o: kvtopo.BlockTable(o, 4)]),
            kvtopo.CheckResult: ("kvtopo.check(...)", [lambda o: o.accepted]),
            kvtopo.StepResult: ("KVCacheManager's batched calls",
                                [lambda o: o.num_failed, lambda o: o.block_ids]),
            kvtopo.ComputedBlocks: ("KVCacheManager.get_computed_blocks(...)",
                                    [lambda o: o.num_tokens]),
            kvtopo.KVCacheInspector: ("KVCacheManager.inspector()", [lambda o: o.null_block]),
        }
        for cls, (made_by, calls) in uses.items():
            name = cls.__name__
            for use in calls:
                with self.subTest(cls=name), self.assertRaises(TypeError) as e:
                    use(cls.__new__(cls))
                self.assertEqual(
                    str(e.exception),
                    f"{name} object is not initialized: it was created by {name}.__new__ without "
                    f"__init__; get one from {made_by}")
        # __init__ after __new__ is the two-step construction, and works.
        manager = kvtopo.KVCacheManager.__new__(kvtopo.KVCacheManager)
        manager.__init__(self.plan, num_blocks=100)
        self.assertEqual(manager.num_free_blocks, 99)
        table = kvtopo.BlockTable.__new__(kvtopo.BlockTable)
        table.__init__(self.group, 4)
        self.assertEqual(memoryview(table).shape[0], 4)

    def test_a_second_init_is_refused(self):
        # pybind11 skipped __init__ on a constructed object and returned None: the manager kept
        # its 100-block pool while the call read as a fresh 50-block one.
        manager = kvtopo.KVCacheManager(self.plan, num_blocks=100)
        with self.assertRaises(TypeError) as e:
            manager.__init__(self.plan, num_blocks=50)
        self.assertEqual(str(e.exception),
                         "KVCacheManager is already initialized: __init__ runs once; create a new "
                         "one with KVCacheManager(...) or KVCacheManager.from_layout(...)")
        self.assertEqual(manager.num_free_blocks, 99)
        table = kvtopo.BlockTable(self.group, 4)
        with self.assertRaises(TypeError) as e:
            table.__init__(self.group, 8)
        self.assertEqual(str(e.exception), "BlockTable is already initialized: __init__ runs "
                                           "once; create a new one with BlockTable(...)")
        self.assertEqual(table.num_rows, 4)
        # Construction itself, a subclass's super().__init__ and the docstring are unchanged.
        class Sub(kvtopo.KVCacheManager):
            def __init__(self, plan):
                super().__init__(plan, num_blocks=20)
        self.assertEqual(Sub(self.plan).num_free_blocks, 19)
        self.assertTrue(kvtopo.KVCacheManager.__init__.__doc__.startswith(
            "__init__(self: kvtopo._kvtopo.KVCacheManager, plan: kvtopo._kvtopo.Plan, *,"))
        with self.assertRaises(TypeError) as e:
            kvtopo.KVCacheManager.__init__(object(), self.plan)
        self.assertEqual(str(e.exception), "descriptor '__init__' for 'kvtopo._kvtopo.KVCacheManager'"
                                           " objects doesn't apply to a 'object' object")

    def test_a_pool_larger_than_memory_is_a_memory_error_naming_it(self):
        # Was MemoryError("std::bad_alloc"). Run under an address-space limit in a child
        # interpreter, so that this one keeps its memory.
        child = (
            "import resource\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
            "import kvtopo\n"
            "try:\n"
            "    kvtopo.KVCacheManager.from_layout({'num_blocks': 2**31 - 1, 'max_model_len': 1024,\n"
            "        'groups': [{'kind': 'full_attention', 'block_size': 16,\n"
            "                    'page_size_bytes': 64}]})\n"
            "except MemoryError as e:\n"
            "    print(e)\n")
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                             check=True).stdout
        self.assertEqual(out, "KVCacheManager: the bookkeeping of a pool of 2147483647 blocks "
                              "does not fit in this process's memory\n")

    def test_local_seq_lens_bounds_name_the_value(self):
        geometry = self.group.geometry
        with self.assertRaises(ValueError) as e:
            kvtopo.local_seq_lens(geometry, 0, [3, -2])
        self.assertEqual(str(e.exception), "seq_lens[1] is -2; lengths are non-negative")
        with self.assertRaises(ValueError) as e:
            kvtopo.local_seq_lens(geometry, 0, [3], num_rows=2**31)
        self.assertEqual(str(e.exception),
                         "num_rows must be in [len(seq_lens), 268435456], got 2147483648")

    def test_mm_items_errors_name_the_entry(self):
        manager = kvtopo.KVCacheManager(self.plan)
        for bad, error, message in [
                (5, TypeError, "mm_items must be an iterable of (identifier: str, offset: int, "
                               "length: int) entries, got int"),
                ([5], TypeError, "mm_items[0] must be a tuple (identifier: str, offset: int, "
                                 "length: int), got int"),
                ([("img", 1)], ValueError, "mm_items[0] is ('img', 1); entries are (identifier: "
                                           "str, offset: int, length: int)"),
                ([("img", 0, 4), ("img", 1.5, 1)], TypeError,
                 "mm_items[1] offset must be an int, got float"),
                ([("img", 0, 4), ("img", -1, 2)], ValueError,
                 "mm_items[1]: offset -1 and length 2 must be non-negative"),
                ([("\udc80", 1, 1)], ValueError,
                 "mm_items[0]: the identifier '\\udc80' is not UTF-8 text (it holds a lone "
                 "surrogate)")]:
            with self.assertRaises(error) as e:
                manager.add_request("r", list(range(20)), mm_items=bad)
            self.assertEqual(str(e.exception), message)
            self.assertNotIn("r", manager)

    def test_mm_item_whose_end_overflows(self):
        # offset + length past 2^63 - 1 was summed unchecked when blocks were hashed.
        manager = kvtopo.KVCacheManager(self.plan)
        with self.assertRaises(ValueError) as e:
            manager.add_request("r", list(range(20)), mm_items=[("img", 2**62, 2**62)])
        self.assertEqual(str(e.exception),
                         "mm_items[0]: offset 4611686018427387904 and length 4611686018427387904 "
                         "must be non-negative with a sum that fits 64 bits")

    def test_allocate_slots_lookahead_bound(self):
        # Returned success with no blocks (signed overflow).
        manager = kvtopo.KVCacheManager(self.plan)
        manager.add_request("r", list(range(20)))
        with self.assertRaises(ValueError) as e:
            manager.allocate_slots("r", 20, num_lookahead_tokens=2**63 - 1)
        self.assertEqual(str(e.exception),
                         "num_lookahead_tokens must be in [0, 2^40], got 9223372036854775807")


if __name__ == "__main__":
    unittest.main()
