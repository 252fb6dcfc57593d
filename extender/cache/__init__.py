"""Cluster state: a store fed by list+watch (or files), and the topology index it keeps."""
