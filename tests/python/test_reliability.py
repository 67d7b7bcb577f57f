"""Python arguments that once crashed the interpreter or were read wrongly: each is an exception
naming the argument and its range (docs/reliability.md)."""

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
        self.assertEqual(plan.to_json(64).count("\n" + " " * 64 + '"'), 15)
        for obj in (plan, kvtopo.check("qwen3-next-80b", tensor_parallel_size=4)):
            with self.assertRaises(ValueError) as e:
                obj.to_json(100000)
            self.assertEqual(str(e.exception),
                             "indent must be in [-1, 64] (-1: one line), got 100000")
            with self.assertRaises(ValueError) as e:
                obj.to_json(indent=-2)
            self.assertEqual(str(e.exception), "indent must be in [-1, 64] (-1: one line), got -2")

    def test_local_seq_lens_bounds_name_the_value(self):
        geometry = self.group.geometry
        with self.assertRaises(ValueError) as e:
            kvtopo.local_seq_lens(geometry, 0, [3, -2])
        self.assertEqual(str(e.exception), "seq_lens[1] is -2; lengths are non-negative")
        with self.assertRaises(ValueError) as e:
            kvtopo.local_seq_lens(geometry, 0, [3], num_rows=2**31)
        self.assertEqual(str(e.exception),
                         "num_rows must be in [len(seq_lens), 268435456], got 2147483648")

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
