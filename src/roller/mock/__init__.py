"""roller.mock"""
