"""roller.identity"""
