"""roller.wire"""
