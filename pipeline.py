"""Placeholder until the recipes land: generate one sample from the embedded default model."""
import models
import data

if __name__ == "__main__":
    model, tok = models.load_policy()
    task = data.math_tasks(1, "test", seed=0)[0]
    ids = data.prompt_ids(tok, [task])
    out = models.HFEngine(model, tok).generate(ids, models.SamplingParams(temperature=0, max_new_tokens=128))
    print(f"Q: {task['prompt']}\nA: {out[0].text}\n(gold: {task['answer']})")
