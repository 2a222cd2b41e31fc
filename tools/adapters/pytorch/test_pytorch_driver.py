"""Tests of tools/adapters/pytorch_driver.py's option `maximize` (SEMANTICS §20), end to end through the driver's line
protocol (fixtures/PROTOCOL.md: a hello, then one program per line), with Debian's python3-torch:

    /usr/bin/python3 -m unittest discover -s tools/adapters/pytorch -p 'test_*.py'

No lockstep needed: the driver's answers are read here. The fused path's declaration is checked on the Torch class
(torch 1.13 has fused Adam on CUDA only).
"""
import json
import os
import subprocess
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
driver_path = os.path.join(here, "..", "pytorch_driver.py")
sys.path.insert(0, os.path.dirname(driver_path))
import pytorch_driver as driver  # noqa: E402  (imports torch)

kit = driver.kit
FIVE = ("sgd", "adam", "adamw", "rmsprop", "adagrad")


def answers(lines, *args):
    """The driver's answer lines to `lines` (objects), one per line, in order."""
    text = "".join(json.dumps(x) + "\n" for x in lines)
    done = subprocess.run([sys.executable, driver_path] + list(args), input=text, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(x) for x in done.stdout.splitlines()]


def program(defaults, actions=(), kind="sgd"):
    """w = [1, 2] (float64), loss sum(w * w): grad [2, 4]; forward, backward, step, then `actions`."""
    w = {"op": "param", "name": "w"}
    return {"params": [{"name": "w", "dtype": "float64", "shape": [2], "values": [1.0, 2.0]},
                       {"name": "v", "dtype": "float64", "shape": [1], "values": [3.0]}],
            "loss": {"op": "sum", "args": [{"op": "mul", "args": [w, w]}]},
            "optimizer": {"type": kind, "defaults": defaults, "params": ["w"]},
            "actions": [{"action": "forward"}, {"action": "backward"}, {"action": "step"}] + list(actions)}


def traces(programs, *args):
    got = answers([{"id": "lockstep-hello", "hello": {"protocol": 8}}]
                  + [{"id": "p%d" % i, "program": p} for i, p in enumerate(programs)], *args)
    assert [a["id"] for a in got] == ["lockstep-hello"] + ["p%d" % i for i in range(len(programs))], got
    for a in got[1:]:
        assert "trace" in a, a
    return got[0]["hello"], [a["trace"] for a in got[1:]]


class Maximize(unittest.TestCase):
    SGD = {"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False}

    def check_sgd(self, *args):
        up, down, unset = traces([program({"lr": 0.1, "maximize": True}), program({"lr": 0.1, "maximize": False}),
                                  program({"lr": 0.1})], *args)[1]
        step = up["records"][2]
        self.assertEqual(step["params"]["w"]["values"], [1.2, 2.4])  # up the gradient (SEM-20.1)
        self.assertEqual(step["params"]["w"]["grad"]["values"], [2.0, 4.0])  # .grad keeps its values
        self.assertTrue(step["params"]["w"]["grad"]["same_as_previous"])   # and its identity
        self.assertEqual(step["groups"], [{"params": ["w"], "options": dict(self.SGD, maximize=True)}])
        self.assertEqual(up["init"]["groups"], step["groups"])
        self.assertEqual(down["records"][2]["params"]["w"]["values"], [0.8, 1.6])
        for t in (down, unset):
            for r in [t["init"]] + t["records"]:
                self.assertEqual(r["groups"], [{"params": ["w"], "options": self.SGD}])  # no maximize key
        self.assertEqual(json.dumps(down), json.dumps(unset))  # false is what a program without it gets

    def test_sgd_single(self):
        self.check_sgd()

    def test_sgd_foreach(self):
        self.check_sgd("--mode", "foreach")

    def test_hello(self):
        single = answers([{"id": "lockstep-hello", "hello": {"protocol": 8}}])[0]["hello"]
        self.assertNotIn("supports", single)  # everything, maximize included
        foreach = answers([{"id": "lockstep-hello", "hello": {"protocol": 8}}], "--mode", "foreach")[0]["hello"]
        optimizers = foreach["supports"]["optimizers"]
        self.assertEqual(sorted(optimizers), sorted(FIVE))
        for kind in FIVE:
            self.assertIn("maximize", optimizers[kind])

    def test_groups_set_options_and_add_param_group_carry_it(self):
        t = traces([program({"lr": 0.1}, [
            {"action": "set_options", "options": {"maximize": True}}, {"action": "step"},
            {"action": "add_param_group", "params": ["v"], "options": {"lr": 0.5, "maximize": True}},
            {"action": "set_options", "group": 0, "options": {"maximize": False}}])])[1][0]
        records = t["records"]
        self.assertNotIn("maximize", records[2]["groups"][0]["options"])
        self.assertIs(records[3]["groups"][0]["options"]["maximize"], True)
        self.assertEqual(records[4]["params"]["w"]["values"], [1.0, 2.0])  # down, then back up
        self.assertEqual([g["options"].get("maximize") for g in records[5]["groups"]], [True, True])
        self.assertEqual([g["options"].get("maximize") for g in records[6]["groups"]], [None, True])
        self.assertTrue(all("error" not in r for r in records))

    def test_adam_state_is_negated(self):  # SEM-20.1: exp_avg [-0.2, -0.4], exp_avg_sq as without
        up, down = traces([program({"lr": 0.1, "maximize": True}, kind="adam"),
                           program({"lr": 0.1}, kind="adam")])[1]
        s_up, s_down = up["records"][2]["params"]["w"]["state"], down["records"][2]["params"]["w"]["state"]
        self.assertEqual(s_up["exp_avg"], [-x for x in s_down["exp_avg"]])
        self.assertEqual(s_up["exp_avg_sq"], s_down["exp_avg_sq"])
        self.assertIs(up["init"]["groups"][0]["options"]["maximize"], True)
        self.assertNotIn("maximize", down["init"]["groups"][0]["options"])

    def test_foreign_to_lbfgs(self):
        p = program({"lr": 1, "maximize": False}, kind="lbfgs")
        p["actions"] = []
        t = traces([p])[1][0]
        self.assertEqual(t["init"]["error"]["kind"], "invalid_option")
        self.assertEqual(t["init"]["groups"], [])


class Fused(unittest.TestCase):
    """--mode fused declares maximize only for the fused paths whose probe step takes it (fused_paths)."""

    def test_declared_where_the_path_takes_it(self):
        fused = {k: k == "adam" for k in driver.CLASSES}
        takes = driver.Torch("fused", "cpu", fused, {"adam": True}).supports()["optimizers"]
        refuses = driver.Torch("fused", "cpu", fused, {"adam": False}).supports()["optimizers"]
        self.assertEqual(list(takes), ["adam"])
        self.assertIn("maximize", takes["adam"])
        self.assertEqual(refuses["adam"], [o for o in kit.FIELDS["adam"] if o != "maximize"])
        fw = driver.Torch("fused", "cpu", fused, {"adam": False})
        self.assertEqual(kit.run_program(fw, program({"lr": 0.1, "maximize": True}, kind="adam")),
                         {"unsupported": "adam.maximize"})

    def test_the_probe(self):
        class Refuses:  # a fused path that refuses maximize
            def __init__(self, params, lr, fused=False, maximize=False):
                if maximize:
                    raise RuntimeError("fused does not support maximize")
                self.params = params
            def step(self): pass

        class Takes(Refuses):
            def __init__(self, params, lr, fused=False, maximize=False): self.params = params

        saved = driver.CLASSES
        try:
            driver.CLASSES = {"refuses": Refuses, "takes": Takes, "sgd": saved["sgd"]}
            fused, maximize = driver.fused_paths("cpu")
        finally:
            driver.CLASSES = saved
        self.assertEqual(fused["refuses"], True)
        self.assertEqual(maximize["refuses"], False)
        self.assertEqual((fused["takes"], maximize["takes"]), (True, True))
        self.assertLessEqual(maximize["sgd"], fused["sgd"])  # torch's own: never maximize without the path


if __name__ == "__main__":
    unittest.main()
