"""The harness against the protocol's schema (sandbox_harness/protocol.json): the one file both
sides take their names from (the server's constants are generated from it at build time,
cmake/gen_protocol.cmake). Every event the harness builds, every op it serves and every verdict
it gives is the schema's, with the schema's fields; so is the test config the other tests use."""

import ast
import os
import unittest

import harness_config
from sandbox_harness import protocol, wire

PACKAGE_DIR = os.path.dirname(protocol.__file__)


def harness_modules():
    """(file name, syntax tree) of every module of the package."""
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE_DIR, name)) as f:
                yield name, ast.parse(f.read(), name)


def string_of(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def event_literals():
    """(where, event name, its literal keys) of every dict literal with an "ev" key."""
    for name, tree in harness_modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            keys = [string_of(k) if k is not None else None for k in node.keys]
            if "ev" in keys:
                event = string_of(node.values[keys.index("ev")])
                yield "%s:%d" % (name, node.lineno), event, {k for k in keys if k} - {"ev"}


def compared_ops():
    """The op names the harness compares a variable `op` with (op == "x", op != "x")."""
    ops = set()
    for _, tree in harness_modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)
                    and node.left.id == "op"):
                ops.update(string_of(c) for c in node.comparators if string_of(c) is not None)
    return ops


def fields_of(spec):
    """A message's (or an object field's) fields, named types resolved: {name: nested or None}."""
    out = {}
    for name, field in spec.items():
        kind = field.get("type", "").split("|")[0]
        if "fields" in field:
            out[name] = fields_of(field["fields"])
        elif kind in protocol.SCHEMA["types"]:
            out[name] = fields_of(protocol.SCHEMA["types"][kind])
        else:
            out[name] = None
    return out


def shape(obj):
    """An object's keys, nested objects as their own shapes."""
    return {k: shape(v) if isinstance(v, dict) else None for k, v in obj.items()}


class ProtocolTest(unittest.TestCase):
    def test_version_and_frames_are_the_schemas(self):
        self.assertEqual(wire.PROTOCOL_VERSION, protocol.SCHEMA["version"])
        self.assertEqual((wire.KIND_JSON, wire.KIND_STDOUT, wire.KIND_STDERR), (b"J", b"1", b"2"))

    def test_every_event_has_the_schemas_fields(self):
        built = set()
        for where, event, keys in event_literals():
            self.assertIn(event, protocol.EVENTS, where)
            fields = protocol.EVENTS[event]["fields"]
            self.assertLessEqual(keys, set(fields), "%s: %s has fields the schema lacks"
                                 % (where, event))
            always = {k for k, f in fields.items() if not f.get("optional")}
            self.assertLessEqual(always, keys, "%s: %s lacks fields the schema requires"
                                 % (where, event))
            built.add(event)
        self.assertEqual(built, set(protocol.EVENTS), "events of the schema the harness never sends")

    def test_every_op_is_the_schemas_and_served(self):
        from sandbox_harness.messages import FILE_OPS
        served = compared_ops() | set(FILE_OPS)
        self.assertEqual(served, set(protocol.REQUESTS))

    def test_every_verdict_is_the_schemas(self):
        self.assertEqual(protocol.VERDICTS, ("ok", "error", "timeout", "memory", "output_limit",
                                             "cancelled", "signal", "internal"))
        named = set()
        for where, tree in harness_modules():
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "VERDICT"):
                    self.assertIn(node.attr, protocol.VERDICTS, where)
                    named.add(node.attr)
        # decide_verdict names every verdict through VERDICT, never as a string of its own.
        tree = dict(harness_modules())["verdicts.py"]
        decide = next(n for n in tree.body
                      if isinstance(n, ast.FunctionDef) and n.name == "decide_verdict")
        for node in ast.walk(decide):
            if isinstance(node, ast.Return):
                first = node.value.elts[0]
                self.assertIsInstance(first, ast.Attribute, ast.dump(first))
        self.assertEqual(named, set(protocol.VERDICTS))

    def test_the_test_config_is_the_schemas(self):
        # The other tests' config (harness_config.py) has every field of the schema's, so their
        # checks that each one is required cover the whole message.
        config = dict(harness_config.CONFIG)
        self.assertEqual(config.pop("op"), "config")
        self.assertEqual(shape(config), fields_of(protocol.REQUESTS["config"]["fields"]))


if __name__ == "__main__":
    unittest.main()
