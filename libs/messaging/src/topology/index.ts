export * from './types';
export * from './names';
export * from './validate';
export * from './plan';
export * from './declare';
export * from './policies';
export * from './permissions';
export * from './effective';
