import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import todo  # noqa: E402


class TodoTest(unittest.TestCase):
    def setUp(self):
        self.db = os.path.join(tempfile.mkdtemp(), "db.json")

    def test_add_assigns_increasing_ids(self):
        self.assertEqual(todo.main(["--db", self.db, "add", "a"]), 0)
        todo.main(["--db", self.db, "add", "b", "--tag", "x"])
        store = todo.Store(self.db)
        self.assertEqual([i["id"] for i in store.items()], [1, 2])

    def test_done_hides_item_from_list(self):
        todo.main(["--db", self.db, "add", "a"])
        todo.main(["--db", self.db, "done", "1"])
        self.assertEqual(todo.Store(self.db).items(), [])

    def test_done_rejects_unknown_id(self):
        self.assertEqual(todo.main(["--db", self.db, "done", "9"]), 1)


if __name__ == "__main__":
    unittest.main()
