"""The only place that talks to kubernetes-asyncio.

Objects travel as plain JSON dicts (a kind is a few views over the raw dict, as in kr8s and
lightkube): no per-object model classes, which are slow at fleet scale.

- `client.py`: one shared API client per process (config, rate limits, retries, raw JSON).
- `errors.py`: one error tree mapped from HTTP statuses; `kubeconfig.py`: one context as a
  file of its own; `ratelimit.py`: client-side QPS limits.
- `resources.py`: resource kinds, their REST paths and views over objects (pure).
- `watching.py`: list, then watch, relist on 410, and a hung-API-server probe.
- `crds.py`: waiting until a CustomResourceDefinition is served.
"""
