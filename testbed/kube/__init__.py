"""The only place that talks to kubernetes-asyncio.

Objects travel as plain JSON dicts (a kind is a few views over the raw dict, as in kr8s and
lightkube): no per-object model classes, which are slow at fleet scale.
"""
