#!/usr/bin/env python3
"""Evaluates a policy trained in cenic (`examples/ppo.rs`) in gymnasium + MuJoCo.

    /work/venv/bin/python scripts/eval_policy_mujoco.py target/ppo/HalfCheetah-v5_policy.actor.json [--episodes 10]

Reads the actor exported by `cargo run --release --example ppo -- --task T --export PATH` (the three layers
and the observation statistics), builds gymnasium's own environment for its task (`gymnasium.make`, MuJoCo's
physics, the v5 defaults including the time limit), and runs `--episodes` episodes with the deterministic mean
action (clipped to the action space, as cenic's environment clips it), seeds 1000, 1001, ... as `ppo --eval`
uses. `--substeps K` integrates each environment step with K times as many MuJoCo steps of 1/K the size.
Prints the mean and standard deviation of the returns, and a JSON line with the figures.
Written and run with gymnasium 1.x and the `mujoco` Python package 4.0.0.
"""

import argparse
import json

import gymnasium as gym
import numpy as np


def policy(actor):
    mean = np.array(actor["obs"]["mean"])
    std = np.sqrt(np.array(actor["obs"]["var"]) + 1e-8)
    clip = actor["clip"]
    layers = [(np.array(l["w"]), np.array(l["b"])) for l in actor["layers"]]

    def act(obs):
        x = np.clip((obs - mean) / std, -clip, clip)
        for k, (w, b) in enumerate(layers):
            x = x @ w + b
            if k < len(layers) - 1:
                x = np.tanh(x)
        return x

    return act


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("actor")
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--substeps", type=int, default=1,
                    help="MuJoCo steps per model timestep: the model's timestep divided by this and frame_skip "
                         "multiplied by it (the same environment step, integrated more finely)")
    a = ap.parse_args()
    actor = json.load(open(a.actor))
    task = actor["task"]
    act = policy(actor)
    env = gym.make(task)
    if a.substeps > 1:
        frame_skip = env.unwrapped.frame_skip * a.substeps
        env = gym.make(task, frame_skip=frame_skip)
        env.unwrapped.model.opt.timestep /= a.substeps
    returns, lengths = [], []
    for e in range(a.episodes):
        obs, _ = env.reset(seed=a.seed + e)
        total, n, done = 0.0, 0, False
        while not done:
            u = np.clip(act(obs), env.action_space.low, env.action_space.high)
            obs, r, term, trunc, _ = env.step(u)
            total += r
            n += 1
            done = term or trunc
        returns.append(total)
        lengths.append(n)
    label = "" if a.substeps == 1 else f" (timestep / {a.substeps})"
    print(f"{task} in gymnasium + MuJoCo{label}: mean return over {a.episodes} episodes {np.mean(returns):.2f} "
          f"(std {np.std(returns):.2f}; lengths {lengths})")
    print(json.dumps({"task": task, "returns": returns, "mean": float(np.mean(returns))}))


if __name__ == "__main__":
    main()
